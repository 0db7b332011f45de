package mcp

import "time"

// SetRemoteNotifyTimeoutForTest sets the bound of the delivery of another
// process's NotifyAll until the returned function restores it.
func SetRemoteNotifyTimeoutForTest(d time.Duration) (restore func()) {
	old := remoteNotifyTimeout
	remoteNotifyTimeout = d
	return func() { remoteNotifyTimeout = old }
}

// ParseRequestMetaForTest is parseRequestMeta, for the tests of package
// mcp_test that check its reading of _meta.
func ParseRequestMetaForTest(params []byte) (requestMeta, *Error) { return parseRequestMeta(params) }

// Wire types of the protocol that are not part of the API, for the
// vocabulary tests of package mcp_test.
type (
	CancelledParams                       = cancelledParams
	PaginatedParams                       = paginatedParams
	InitializeParams                      = initializeParams
	ListenParams                          = listenParams
	SubscriptionAcknowledgedParams        = subscriptionAcknowledgedParams
	TaskNotificationParams                = taskNotificationParams
	UpdateTaskParams                      = updateTaskParams
	GetTaskParams                         = getTaskParams
	GetTaskPayloadParams                  = getTaskPayloadParams
	CancelTaskParams                      = cancelTaskParams
	SetLevelParams                        = setLevelParams
	SubscribeParams                       = subscribeParams
	UnsubscribeParams                     = unsubscribeParams
	RequestParams                         = requestParams
	NotificationParams                    = notificationParams
	InputRequiredResult                   = inputRequiredResult
	MissingCapabilityData                 = missingCapabilityData
	URLElicitationRequiredData            = urlElicitationRequiredData
	ResourceUpdatedNotificationParams     = resourceUpdatedNotificationParams
	ElicitationCompleteNotificationParams = elicitationCompleteNotificationParams
	EmptyResult                           = emptyResult
	RelatedTaskMetadata                   = relatedTaskMetadata
)

// Names of package mcp that are not part of the API, for its tests.
type SessionState = sessionState

const (
	StateStarting            = stateStarting
	StateClosed              = stateClosed
	MetaRelatedTask          = metaRelatedTask
	IncludeContextNone       = includeContextNone
	IncludeContextThisServer = includeContextThisServer
	IncludeContextAllServers = includeContextAllServers
	ToolChoiceAuto           = toolChoiceAuto
	ToolChoiceRequired       = toolChoiceRequired
	ToolChoiceNone           = toolChoiceNone
	StopReasonEndTurn        = stopReasonEndTurn
	StopReasonStopSequence   = stopReasonStopSequence
	StopReasonMaxTokens      = stopReasonMaxTokens
	StopReasonToolUse        = stopReasonToolUse
)

var (
	LoggingLevelForSlog = loggingLevelForSlog
)

// SeverityForTest is l's RFC 5424 severity.
func SeverityForTest(l LoggingLevel) int { return l.severity() }

// LogHandlerForTest is ss's slog.Handler that sends to the client.
var LogHandlerForTest = (*Session).logHandler

// SupportedVersionsForTest is the list of the 2025 revisions keel negotiates.
var SupportedVersionsForTest = supportedVersions
